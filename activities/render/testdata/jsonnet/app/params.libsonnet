{
  image: 'nginx:1.27',
  port: 80,
}
